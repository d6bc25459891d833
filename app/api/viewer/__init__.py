"""The viewer area: who the token speaks for, and objects by global id."""
