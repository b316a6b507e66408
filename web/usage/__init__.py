"""A job's usage as the job page's plots read it (the series: jobs.usage)."""
