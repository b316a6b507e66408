"""The web layer: pages, the OpenPAI REST API, the web terminal, template tags, fix offers and
the pages' texts. The top layer: it reads every app below it (accounts < clusters < jobs <
scheduling < web) and nothing below imports it (tests/architecture/test_dependencies.py)."""
