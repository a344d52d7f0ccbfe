"""The framework-free core's shared facts: what every layer may import (no judge, no
dimensions, no CLI)."""
