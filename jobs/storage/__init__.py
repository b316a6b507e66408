"""Users' storage: their areas of the default FS (`areas`), the admin's shared storages (`configs`),
and the error both raise (`errors`)."""
