"""The C part of the package; everything else is declared in pyproject.toml.

The extension encodes Whoosh posting blocks for index builds (backends/whoosh/build/_w3postings.c).
It is optional: where it cannot be compiled (no C compiler) the package installs without it and
builds indexes with the pure-Python encoder, about twice as slowly.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "searchsvc.backends.whoosh.build._w3postings",
            ["searchsvc/backends/whoosh/build/_w3postings.c"],
            optional=True,
        )
    ]
)
