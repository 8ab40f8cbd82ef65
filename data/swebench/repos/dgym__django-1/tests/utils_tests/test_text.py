import unittest

from django.utils.text import capfirst, get_text_list


class TestUtilsText(unittest.TestCase):
    def test_capfirst(self):
        self.assertEqual(capfirst("hello world"), "Hello world")

    def test_get_text_list_short(self):
        self.assertEqual(get_text_list([]), "")
        self.assertEqual(get_text_list(["a"]), "a")
