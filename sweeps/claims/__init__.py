"""Shipped claims (seqbench verify): YAML files beside this module."""
