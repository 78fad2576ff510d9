"""Local HTTP fakes of the cloud REST APIs the GCE and Azure providers speak (127.0.0.1 only)."""
