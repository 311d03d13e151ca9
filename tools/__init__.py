"""Developer tools run from a checkout (screenshots for the README); not shipped in the wheel."""
