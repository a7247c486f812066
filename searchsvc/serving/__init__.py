"""gunicorn parts of the deployment: the worker class that gunicorn_conf.py names."""
