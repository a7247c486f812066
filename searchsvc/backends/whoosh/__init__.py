"""The Whoosh backend: the only package of searchsvc that imports whoosh."""

from searchsvc.backends.whoosh import patches

patches.apply()
