"""Tests against a real third-party server (llama-cpp-python); see conftest.py."""
