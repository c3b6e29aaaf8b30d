// The page: one socket to the duplex-cli process that holds the session (the SDK, the API
// key, the recording). The page captures, plays and shows; it never talks to the model.
import { ANSWER, AudioPath, FrameGrabber, audioMessage, frameMessage } from "/static/media.js";

const $ = (id) => document.getElementById(id);
const ui = {
  status: $("status"), phase: $("phase"), message: $("message"), start: $("start"),
  stop: $("stop"), ptt: $("ptt"), mute: $("mute"), camera: $("camera"),
  interrupt: $("interrupt"), mic: $("mic-select"), cam: $("camera-select"),
  level: $("level"), latency: $("latency"), lateness: $("lateness"),
  underruns: $("underruns"), transcript: $("transcript"), events: $("events"),
  report: $("report"), bundle: $("bundle"), preview: $("preview"), headphones: $("headphones"),
  decision: $("decision"), units: $("units"),
};
const ECHO = ["echoCancellation", "noiseSuppression", "autoGainControl"];
const state = { ready: null, socket: null, audio: null, stream: null, grabber: null,
                running: false, muted: false, cameraOn: true, talking: false, stats: null };
// For tests and the curious: the page's live objects and what it sent and played
// (samples sent, played samples per response, when each clear came and was done).
window.duplexPage = state;

function newStats() {
  return { samplesSent: 0, framesSent: 0, ids: {}, played: {}, cleared: {}, clearAsked: {},
           interruptAt: null, firstBlockMs: null };
}

function setStatus(text, message) {
  ui.status.textContent = text;
  ui.status.dataset.state = text;
  if (message !== undefined) ui.message.textContent = message || "";
}

function post(msg) {
  if (state.socket && state.socket.readyState === WebSocket.OPEN) {
    state.socket.send(typeof msg === "object" && !(msg instanceof ArrayBuffer) ? JSON.stringify(msg) : msg);
  }
}

function connect() {
  const token = new URLSearchParams(location.hash.slice(1)).get("token");
  if (!token) {
    setStatus("error", "no token: open the URL duplex-cli web printed (it ends with #token=…)");
    return;
  }
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const socket = new WebSocket(`${scheme}//${location.host}/ws?token=${encodeURIComponent(token)}`);
  socket.binaryType = "arraybuffer";
  state.socket = socket;
  socket.onmessage = (event) => {
    if (typeof event.data === "string") onMessage(JSON.parse(event.data));
    else onAnswer(event.data);
  };
  socket.onclose = () => {
    if (ui.status.dataset.state !== "error") {
      setStatus("error", "the connection to duplex-cli closed (is it still running?)");
    }
    teardown();
    ui.start.disabled = true;
  };
}

function onAnswer(data) {
  const view = new DataView(data);
  if (view.getUint8(0) !== ANSWER || !state.audio) return;
  const n = view.getUint32(4, true);
  const pcm = data.slice(8);
  state.audio.send({ type: "audio", n, pcm }, [pcm]);
}

function onMessage(msg) {
  switch (msg.type) {
    case "ping": post({ type: "pong", id: msg.id, page_ms: performance.now() }); break;
    case "ready": onReady(msg); break;
    case "state": onState(msg); break;
    case "session": showModes(msg.modes, msg.mode); ui.camera.disabled = !msg.video; break;
    case "capture": if (state.audio) state.audio.capturing = msg.audio; break;
    case "camera": onCamera(msg); break;
    case "player": if (state.audio) state.audio.send({ type: "config", jitter_ms: msg.jitter_ms }); break;
    case "clear":
      if (state.stats) state.stats.clearAsked[msg.n] = performance.now();
      if (state.audio) state.audio.send(msg);
      break;
    case "play":
      if (state.stats) state.stats.ids[msg.n] = msg.id;
      if (state.audio) state.audio.send(msg);
      break;
    case "end": if (state.audio) state.audio.send(msg); break;
    case "player_stop": if (state.audio) state.audio.send({ type: "stop" }); break;
    case "progress": onProgress(msg); break;
    case "stopped": onStopped(msg); break;
    case "error":
      setStatus(msg.fatal ? "error" : ui.status.textContent, msg.message);
      if (msg.fatal) ui.start.disabled = true;
      break;
    default: break;
  }
}

function onReady(msg) {
  state.ready = msg;
  showModes(msg.modes, msg.mode);
  for (const name of ECHO) $(name).checked = msg.echo[name];
  state.muted = msg.muted;
  state.cameraOn = !msg.camera_off;
  ui.cam.disabled = !msg.video;
  setStatus("idle", "");
  listDevices().then(() => { ui.start.disabled = false; });
}

function showModes(modes, chosen) {
  for (const input of document.querySelectorAll("input[name=mode]")) {
    const offered = modes.includes(input.value);
    input.disabled = !offered || state.running;
    input.closest("label").hidden = !offered;
    if (input.value === chosen) input.checked = true;
  }
}

async function listDevices() {
  let devices = [];
  try { devices = await navigator.mediaDevices.enumerateDevices(); } catch (e) { devices = []; }
  fill(ui.mic, devices.filter((d) => d.kind === "audioinput"), "microphone");
  fill(ui.cam, devices.filter((d) => d.kind === "videoinput"), "camera");
}

function fill(select, devices, what) {
  const chosen = select.value;
  select.replaceChildren();
  const seen = new Set();
  devices.forEach((d, i) => {
    if (!d.deviceId || seen.has(d.deviceId)) return; // no id before permission is given
    seen.add(d.deviceId);
    select.add(new Option(d.label || `${what} ${i + 1}`, d.deviceId));
  });
  if (!seen.size) select.add(new Option(`default ${what}`, "default"));
  select.add(new Option(`no ${what}`, "none"));
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
}

function echoSettings() {
  return Object.fromEntries(ECHO.map((name) => [name, $(name).checked]));
}

function constraint(select) {
  const id = select.value;
  return id && id !== "default" ? { deviceId: { exact: id } } : {};
}

function describe(error) {
  const name = error && error.name;
  if (name === "NotAllowedError" || name === "SecurityError") {
    return "permission denied: allow the microphone and camera for this page, then press Start again";
  }
  if (name === "NotFoundError" || name === "OverconstrainedError") {
    return "no such device: the chosen microphone or camera is not available (unplugged?)";
  }
  if (name === "NotReadableError") return "the device is busy or failed (another program uses it?)";
  return `cannot open the devices: ${name || "error"}: ${error && error.message}`;
}

async function start() {
  const ready = state.ready;
  const mode = (document.querySelector("input[name=mode]:checked") || {}).value;
  const audio = ui.mic.value !== "none";
  const video = ready.video && ui.cam.value !== "none";
  if (!audio && !video) {
    setStatus("error", "no microphone or camera chosen: pick at least one");
    post({ type: "page_error", message: "no microphone or camera chosen" });
    return;
  }
  ui.start.disabled = true;
  const echo = echoSettings();
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({
      audio: audio ? { ...constraint(ui.mic), ...echo, channelCount: 1 } : false,
      video: video ? { ...constraint(ui.cam), width: { ideal: 1280 } } : false,
    });
  } catch (error) {
    const text = describe(error);
    setStatus("error", text);
    post({ type: "page_error", message: text });
    ui.start.disabled = false;
    return;
  }
  state.stream = stream;
  await listDevices();
  const rates = ready.rates[mode];
  const path = new AudioPath(rates.input, rates.output);
  state.audio = path;
  const stats = state.stats = newStats();
  stats.captureRate = path.captureRate;
  path.onBlock = (start, at, pcm) => {
    if (stats.firstBlockMs === null) stats.firstBlockMs = at;
    stats.samplesSent = start + pcm.byteLength / 2;
    post(audioMessage(start, at, pcm));
  };
  path.onPlayed = (report) => {
    for (const [n, offset, count] of report.blocks) stats.played[n] = offset + count;
    post({ type: "played", ...report });
  };
  path.onCleared = (n) => {
    stats.cleared[n] = performance.now();
    post({ type: "cleared", n });
  };
  await path.open(stream);
  const aTrack = stream.getAudioTracks()[0];
  const vTrack = stream.getVideoTracks()[0];
  for (const [track, kind] of [[aTrack, "audio"], [vTrack, "video"]]) {
    if (track) track.addEventListener("ended", () => deviceLost(kind));
  }
  if (vTrack) {
    ui.preview.srcObject = new MediaStream([vTrack]);
    ui.preview.play().catch(() => {});
    state.grabber = new FrameGrabber(ui.preview, (seq, at, w, h, jpeg) => {
      if (!state.cameraOn) return;
      stats.framesSent += 1;
      post(frameMessage(seq, at, w, h, jpeg));
    });
  }
  state.running = true;
  state.talking = false;
  showModes(ready.modes, mode);
  ui.latency.replaceChildren(document.createTextNode("–"));
  ui.report.hidden = true;
  ui.bundle.textContent = "";
  ui.events.replaceChildren();
  post({
    type: "start", mode, audio: Boolean(aTrack), video: Boolean(vTrack),
    capture_rate: path.captureRate, echo, user_agent: navigator.userAgent,
    devices: { microphone: aTrack ? aTrack.label : null, camera: vTrack ? vTrack.label : null },
    tracks: { audio: aTrack ? aTrack.getSettings() : null, video: vTrack ? vTrack.getSettings() : null },
  });
  setControls(mode);
}

function setControls(mode) {
  ui.stop.disabled = !state.running;
  ui.mute.disabled = !state.running || !state.stream || !state.stream.getAudioTracks().length;
  ui.camera.disabled = !state.running || !state.grabber;
  ui.ptt.disabled = !state.running || mode !== "ptt";
  ui.interrupt.disabled = !state.running;
  ui.mute.setAttribute("aria-pressed", String(state.muted));
  ui.camera.setAttribute("aria-pressed", String(state.cameraOn));
  ui.mute.textContent = state.muted ? "Unmute" : "Mute";
  ui.camera.textContent = state.cameraOn ? "Camera off" : "Camera on";
}

function deviceLost(kind) {
  const what = kind === "audio" ? "microphone" : "camera";
  ui.message.textContent = `the ${what} stopped (unplugged?)`;
  post({ type: "device_lost", kind, reason: "the track ended (unplugged or revoked)" });
  if (kind === "video" && state.grabber) state.grabber.stop();
}

function onCamera(msg) {
  if (!state.grabber) return;
  if (msg.on) {
    state.cameraSettings = msg;
    if (state.cameraOn) state.grabber.start(msg);
  } else {
    state.grabber.stop();
  }
}

function onState(msg) {
  setStatus(msg.state, msg.message || "");
}

function onProgress(p) {
  ui.phase.textContent = p.phase;
  ui.level.value = Math.max(-96, Math.min(0, p.level_dbfs));
  ui.decision.textContent = p.decision;
  ui.transcript.replaceChildren(...p.transcript.map((line) => {
    const el = document.createElement("p");
    el.textContent = line;
    return el;
  }));
  if (p.latency_ms !== null && ui.latency.dataset.final !== "1") {
    ui.latency.textContent = `${Math.round(p.latency_ms)} ms (live estimate)`;
  }
  ui.lateness.textContent = p.lateness_max_ms === null ? "–"
    : `p50 ${p.lateness_p50_ms} ms, max ${p.lateness_max_ms} ms`;
  ui.underruns.textContent = String(p.underruns);
  ui.units.textContent = `${p.appends} appends, ${p.commits} commits, ${p.frames_sent} frames`;
  for (const warning of p.warnings) ui.message.textContent = `warning: ${warning}`;
  for (const line of p.events) {
    const li = document.createElement("li");
    li.textContent = `${line.media_ms === null ? "–" : Math.round(line.media_ms)} ms  ${line.type}` +
      (line.response_id ? `  ${line.response_id}` : "");
    li.dataset.type = line.type;
    ui.events.append(li);
  }
}

function onStopped(msg) {
  state.running = false;
  teardown();
  ui.start.disabled = false;
  showModes(state.ready.modes, (document.querySelector("input[name=mode]:checked") || {}).value);
  setControls("");
  if (msg.error) ui.message.textContent = `error: ${msg.error}`;
  if (msg.report) {
    ui.report.href = msg.report;
    ui.report.hidden = false;
  }
  ui.bundle.textContent = msg.bundle ? `bundle: ${msg.bundle}` : "";
  const turns = (msg.result && msg.result.turns) || [];
  const heard = turns.filter((t) => t.latency_ms !== null && t.latency_ms !== undefined);
  ui.latency.dataset.final = "1";
  if (heard.length) {
    const list = document.createElement("ol");
    for (const t of heard) {
      const li = document.createElement("li");
      li.dataset.response = t.response_id;
      li.dataset.latencyMs = String(t.latency_ms);
      li.textContent = `${Math.round(t.latency_ms)} ms`;
      list.append(li);
    }
    ui.latency.replaceChildren(list);
  } else {
    ui.latency.textContent = "no answer heard";
  }
}

function teardown() {
  if (state.grabber) state.grabber.stop();
  state.grabber = null;
  if (state.audio) state.audio.close();
  state.audio = null;
  if (state.stream) for (const track of state.stream.getTracks()) track.stop();
  state.stream = null;
  ui.preview.srcObject = null;
}

function control(action) { post({ type: "control", action }); }

function talk(down) {
  if (ui.ptt.disabled || state.talking === down) return;
  state.talking = down;
  ui.ptt.setAttribute("aria-pressed", String(down));
  control(down ? "talk_down" : "talk_up");
}

ui.start.addEventListener("click", () => { ui.latency.dataset.final = "0"; start(); });
ui.stop.addEventListener("click", () => { post({ type: "stop" }); ui.stop.disabled = true; });
ui.mute.addEventListener("click", () => {
  state.muted = !state.muted;
  control(state.muted ? "mute" : "unmute");
  setControls(document.querySelector("input[name=mode]:checked").value);
});
ui.camera.addEventListener("click", () => {
  state.cameraOn = !state.cameraOn;
  control(state.cameraOn ? "camera_on" : "camera_off");
  if (state.grabber) {
    if (state.cameraOn && state.cameraSettings) state.grabber.start(state.cameraSettings);
    else state.grabber.stop();
  }
  setControls(document.querySelector("input[name=mode]:checked").value);
});
ui.interrupt.addEventListener("click", () => {
  if (state.stats) state.stats.interruptAt = performance.now();
  control("interrupt");
});
ui.ptt.addEventListener("pointerdown", (e) => { e.preventDefault(); talk(true); });
for (const name of ["pointerup", "pointerleave", "pointercancel"]) {
  ui.ptt.addEventListener(name, () => talk(false));
}
document.addEventListener("keydown", (e) => {
  if (e.code === "Space" && !e.repeat && e.target.tagName !== "INPUT" && e.target.tagName !== "SELECT") {
    e.preventDefault();
    talk(true);
  }
});
document.addEventListener("keyup", (e) => { if (e.code === "Space") talk(false); });
$("echoCancellation").addEventListener("change", (e) => { ui.headphones.hidden = e.target.checked; });
connect();
