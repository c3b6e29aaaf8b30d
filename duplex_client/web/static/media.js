// The page's media: one AudioContext for the microphone (capture worklet) and the answers
// (player worklet), the camera's frames, and the audio clock → page clock mapping.
export const AUDIO = 1, FRAME = 2, ANSWER = 3;

export class AudioPath {
  constructor(rate) {
    this.context = new AudioContext({ sampleRate: rate, latencyHint: "interactive" });
    this.capturing = false;
    this.base = null; // the context frame of the first block sent
    this.inputLatencyS = 0;
    this.onBlock = null; // (startSample, capturedMs, pcm ArrayBuffer) while capturing
    this.onPlayed = null; // ({blocks, underruns}) with page times
    this.onCleared = null; // (n)
  }

  async open(stream) {
    const ctx = this.context;
    await ctx.audioWorklet.addModule("/static/capture-worklet.js");
    await ctx.audioWorklet.addModule("/static/player-worklet.js");
    this.player = new AudioWorkletNode(ctx, "duplex-player", { outputChannelCount: [1] });
    this.player.connect(ctx.destination);
    this.player.port.onmessage = (event) => this.played(event.data);
    if (stream && stream.getAudioTracks().length) {
      const track = stream.getAudioTracks()[0];
      const latency = track.getSettings().latency;
      this.inputLatencyS = typeof latency === "number" ? latency : 0;
      this.source = ctx.createMediaStreamSource(stream);
      this.capture = new AudioWorkletNode(ctx, "duplex-capture", { numberOfOutputs: 0 });
      this.capture.port.onmessage = (event) => this.block(event.data);
      this.source.connect(this.capture);
    }
    if (ctx.state !== "running") await ctx.resume();
  }

  // When the output plays context frame `frame`, on the page's clock (ms). The context's
  // clock runs against the page's by an offset read from getOutputTimestamp(), which
  // jitters by a few ms: the median of the recent readings is used, and moved only when it
  // drifts by more than 2 ms, so consecutive frames keep consecutive times.
  outputMs(frame) {
    return (frame / this.context.sampleRate) * 1000 + this.offsetMs();
  }

  offsetMs() {
    const ts = this.context.getOutputTimestamp();
    const now = ts.performanceTime
      ? ts.performanceTime - ts.contextTime * 1000
      : performance.now() - this.context.currentTime * 1000;
    const readings = (this.readings = this.readings || []);
    readings.push(now);
    if (readings.length > 31) readings.shift();
    const median = [...readings].sort((a, b) => a - b)[readings.length >> 1];
    if (this.anchor === undefined || Math.abs(median - this.anchor) > 2) this.anchor = median;
    return this.anchor;
  }

  // When the microphone captured the sample the graph took at `frame` (ms): it reached the
  // graph an input latency after capture, and the graph runs an output latency ahead.
  capturedMs(frame) {
    const ahead = (this.context.baseLatency || 0) + (this.context.outputLatency || 0);
    return this.outputMs(frame) - (ahead + this.inputLatencyS) * 1000;
  }

  block({ frame, pcm }) {
    if (!this.capturing || !this.onBlock) return;
    if (this.base === null) this.base = frame;
    this.onBlock(frame - this.base, this.capturedMs(frame), pcm);
  }

  played(msg) {
    if (msg.cleared !== undefined) {
      if (this.onCleared) this.onCleared(msg.cleared);
      return;
    }
    const blocks = msg.blocks.map(([n, offset, count, frame]) => [n, offset, count, this.outputMs(frame), frame]);
    if (this.onPlayed) this.onPlayed({ blocks, underruns: msg.underruns });
  }

  send(msg, transfer) {
    this.player.port.postMessage(msg, transfer || []);
  }

  close() {
    this.capturing = false;
    if (this.capture) this.capture.port.postMessage("stop");
    this.context.close().catch(() => {});
  }
}

// Camera frames: the latest picture of the stream every `periodMs`, scaled so its longest
// side is at most `maxSide`, JPEG-encoded at `quality` (1-100).
export class FrameGrabber {
  constructor(video, onFrame) {
    this.video = video;
    this.onFrame = onFrame;
    this.canvas = document.createElement("canvas");
    this.timer = null;
    this.seq = 0;
  }

  start({ period_ms, max_side, quality }) {
    this.stop();
    this.quality = Math.max(1, Math.min(100, quality)) / 100;
    this.maxSide = max_side;
    const first = performance.now();
    let k = 0;
    const tick = () => {
      this.grab();
      k += 1;
      this.timer = setTimeout(tick, Math.max(0, first + k * period_ms - performance.now()));
    };
    this.timer = 0;
    tick();
  }

  grab() {
    const v = this.video;
    if (!v.videoWidth || !v.videoHeight) return;
    const scale = this.maxSide > 0 ? Math.min(1, this.maxSide / Math.max(v.videoWidth, v.videoHeight)) : 1;
    const w = Math.max(1, Math.round(v.videoWidth * scale));
    const h = Math.max(1, Math.round(v.videoHeight * scale));
    this.canvas.width = w;
    this.canvas.height = h;
    const at = performance.now();
    this.canvas.getContext("2d").drawImage(v, 0, 0, w, h);
    const seq = ++this.seq;
    this.canvas.toBlob((blob) => {
      if (blob && this.timer !== null) blob.arrayBuffer().then((jpeg) => this.onFrame(seq, at, w, h, jpeg));
    }, "image/jpeg", this.quality);
  }

  stop() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

export function audioMessage(startSample, capturedMs, pcm) {
  const out = new Uint8Array(16 + pcm.byteLength);
  const view = new DataView(out.buffer);
  view.setUint8(0, AUDIO);
  view.setUint32(4, startSample >>> 0, true);
  view.setFloat64(8, capturedMs, true);
  out.set(new Uint8Array(pcm), 16);
  return out.buffer;
}

export function frameMessage(seq, capturedMs, width, height, jpeg) {
  const out = new Uint8Array(18 + jpeg.byteLength);
  const view = new DataView(out.buffer);
  view.setUint8(0, FRAME);
  view.setUint16(2, width, true);
  view.setUint16(4, height, true);
  view.setUint32(6, seq >>> 0, true);
  view.setFloat64(10, capturedMs, true);
  out.set(new Uint8Array(jpeg), 18);
  return out.buffer;
}
