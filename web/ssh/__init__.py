"""SSH pages: the key download and the terminal page (keys and ssh info: jobs.ssh)."""
