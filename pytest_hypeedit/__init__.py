"""pytest-hypeedit: HYPE-EDIT-1 as a pytest plugin."""
__version__ = "0.1.0"
