"""Verifier types registered through the API: storage, the three kinds, the catalog."""
