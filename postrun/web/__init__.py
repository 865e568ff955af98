"""``postrun serve``: the local review app, a read-mostly web page over the store.

Server-rendered HTML (Starlette, Jinja2 with autoescape), small vendored static files, one
process apart from the capture (WAL lets both use the store). The only write is a review
verdict. Access needs a one-time login link from ``postrun open``.
"""
