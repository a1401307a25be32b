from django import template

register = template.Library()


@register.filter
def shown(value) -> object:
    """A value as a person should see it in a comparison: 0 stays 0, only nothing at all reads "(empty)"."""
    return "(empty)" if value is None or value == "" else value
