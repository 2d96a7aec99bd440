"""ReFrame integration: base classes and the registration used by generated shims."""
