granian --interface wsgi --host 0.0.0.0 --port 8000 --workers 1 --blocking-threads 32 --no-ws server:app
