"""``redis_tasks_server`` as a WSGI application, for ``gunicorn -w 4 redis_tasks_wsgi:app`` (run from
this folder): each worker imports it, so each worker is a process of its own sharing the Redis."""

from redis_tasks_server import mcp, caller

app = mcp.wsgi_app(principal=caller)
