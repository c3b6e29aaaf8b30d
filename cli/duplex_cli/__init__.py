"""duplex-cli: command-line front end of duplex-client."""
