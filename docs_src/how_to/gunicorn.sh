gunicorn -k minimcp.httpd.gunicorn.Worker -w 4 --threads 256 -b 0.0.0.0:8000 server:app
