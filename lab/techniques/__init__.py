"""The ways of writing the lab compares, per app; the broken ones exist here and nowhere in the apps."""
