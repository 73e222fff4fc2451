"""Reliability and security tests: crashes, concurrency, bad and hostile input, secrets, prompt injection,
privacy, full disk.  See docs/reliability.md for the guarantees and the figures these tests measure."""
