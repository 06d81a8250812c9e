"""The HTTP API: dependencies, middleware, the direct routes and the OpenAPI document."""
