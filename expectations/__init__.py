"""The Great Expectations suites, one `<table>.json` per table: data, read through
`kraftlake.packaged.EXPECTATIONS`.

This file only makes the folder the package `kraftlake.expectations`, so that it ships in
the wheel and an editable install finds it too.
"""
