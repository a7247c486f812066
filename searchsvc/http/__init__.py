"""What every HTTP surface shares, importing only the domain: the status of each domain error
(`status`) and the security headers of every answer (`headers`), for the API, the web page and
the front (nginx's and gunicorn's own error answers)."""
