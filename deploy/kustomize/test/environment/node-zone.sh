#!/bin/sh
# Prints the zone of the node named $1: zone-a or zone-b, by a checksum of the
# name, so that a cluster of several nodes spans both zones.
sum=$(printf '%s' "$1" | cksum | cut -d ' ' -f 1)
if [ $((sum % 2)) -eq 0 ]; then echo zone-a; else echo zone-b; fi
