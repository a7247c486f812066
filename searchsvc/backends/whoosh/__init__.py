"""The Whoosh backend: the only package of searchsvc that imports whoosh."""
