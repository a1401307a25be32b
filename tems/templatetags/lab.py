from django import template

register = template.Library()


@register.filter
def get_item(mapping: dict, key: str):
    """``{{ labels|get_item:name }}``: a dict lookup by a variable key, which the template language lacks."""
    return mapping.get(key, key)
