minimcp inspect examples/bistro_server.py
minimcp call examples/bistro_server.py book_table date=2025-12-24 party_size=2
minimcp call examples/bistro_server.py book_table date=2025-12-25 party_size=2
minimcp call examples/bistro_server.py book_table --json '{"date": "2025-12-24", "party_size": 2}'
minimcp inspect --era legacy -- minimcp run examples/bistro_server.py
minimcp run examples/bistro_server.py --http --port 0
minimcp install claude-desktop examples/bistro_server.py --print
