"""The browser notifier's endpoint (the emails: jobs.notifications)."""
