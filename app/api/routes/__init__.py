"""Thin HTTP routes, one module per resource: parse, call a service, answer."""
