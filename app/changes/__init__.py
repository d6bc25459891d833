"""Live changes: what a workspace's connector applies after import (docs/changes.md)."""
