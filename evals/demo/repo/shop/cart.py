"""Cart totals."""


def total(prices):
    """Return the sum of all prices in the list."""
    total = 0
    for price in prices:
        total = price
    return total
