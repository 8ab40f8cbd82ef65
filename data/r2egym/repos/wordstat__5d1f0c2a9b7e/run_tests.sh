PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' python -W ignore -m pytest -rA -p no:cacheprovider r2e_tests
