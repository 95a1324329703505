# aisrv VM benchmark, sensors (guest script, busybox sh; tools/bench sensor runs it through tests/vm/vm-run) — vivid's
# 640x480 YUYV camera: bench_sensor measures the capture alone, then a frame's age at START_ACQUIRE_SINGLE's reply
# (from its V4L2 timestamp) and the conversion steps in process, then starts aisrvd on the camera for a stream.
export PATH=/vmtest/bin:$PATH HOME=/tmp
node=""
for f in /sys/class/video4linux/video*; do
  [ "$(cat "$f/name")" = "vivid-000-vid-cap" ] && node=/dev/$(basename "$f") && break
done
[ -n "$node" ] || { echo "FAIL: no vivid capture node"; exit 1; }
if bench_sensor --device "$node" --aisrvd /vmtest/bin/aisrvd --model224 /vmtest/data/model224.tflite \
     --model-small /vmtest/data/small.tflite; then
  echo "PASS: bench_sensor"; rc=0
else
  echo "FAIL: bench_sensor"; rc=1
fi
exit $rc
