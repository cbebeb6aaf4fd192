"""The shipped default configuration, `kraftlake.yaml`: data, read through
`kraftlake.packaged.DEFAULT_CONF`; a user's `--conf` file or $KRAFTLAKE_CONF is merged over it.

This file only makes the folder the package `kraftlake.conf`, so that it ships in the wheel
and an editable install finds it too.
"""
