"""Code the test modules share (builders of small warehouses, ...): import it, never another test module."""
