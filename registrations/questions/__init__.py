"""Custom questions per event: the question sets and answers (``question_sets``), their edit (``services``), pages
and API (see docs/questions.md)."""
