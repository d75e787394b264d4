"""OAuth grants without a browser: client credentials, JWT bearer (workload identity), enterprise ID-JAG."""
