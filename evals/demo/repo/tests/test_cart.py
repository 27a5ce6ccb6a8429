import unittest

from shop.cart import total


class TotalTest(unittest.TestCase):
    def test_empty_cart(self):
        self.assertEqual(total([]), 0)

    def test_one_item(self):
        self.assertEqual(total([5]), 5)

    def test_several_items(self):
        self.assertEqual(total([2, 3, 4]), 9)


if __name__ == "__main__":
    unittest.main()
