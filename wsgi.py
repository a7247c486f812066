"""WSGI entry point: `gunicorn --config python:searchsvc.serving.gunicorn_conf wsgi:app`."""

from searchsvc.app import create_app

app = create_app()
