#!/bin/sh
# The one "program" of the back-end test guest (vm/build-backend-guest.sh): a back-end domain
# serves until it is destroyed, so this never returns (/init's power-off never comes). The
# agent runs in the background (vm/backend-before.sh).
echo "IVCUDA-BACKEND-HOLDING"
while :; do
    sleep 3600
done
