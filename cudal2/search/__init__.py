"""The search: proposers write candidates, the harness judges them, the population remembers, winners go to the library."""
