"""A tiny shop: prices and totals."""
