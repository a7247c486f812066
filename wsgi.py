"""WSGI entry point: `gunicorn --config searchsvc/gunicorn_conf.py wsgi:app`."""

from searchsvc.app import create_app

app = create_app()
