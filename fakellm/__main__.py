"""``python -m fakellm --port 8089``: run the fake server standalone (``fakellm.server.main``)."""

from fakellm.server import main

main()
