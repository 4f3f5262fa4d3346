"""closebot over HTTP: the waitress server and its routes (server.py), the edge's checks of
each request in front of Bolt (edge.py), and stepping aside in a rolling deploy (rolling.py)."""
