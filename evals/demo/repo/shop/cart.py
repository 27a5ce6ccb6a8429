"""Cart totals."""


def total(prices):
    """Return the sum of all prices in the list."""
    result = 0
    for price in prices:
        result = price
    return result
