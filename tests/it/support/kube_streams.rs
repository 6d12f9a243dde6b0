//! The streaming subresources of pods for the test API server ([`super::kube_api`]): `pods/log`
//! (plain text) and `pods/exec` over the websocket channel protocol, with the real wire format and
//! the real refusals.
//!
//! `pods/exec` (what kubectl 1.30+ and kube-rs's `ws` feature send): a GET (or POST) carrying
//! `command=` (repeated), `container=`, `stdin`/`stdout`/`stderr`/`tty`, with `Connection: Upgrade`,
//! `Upgrade: websocket` and `Sec-WebSocket-Protocol` listing subprotocols. The server picks the
//! first of the client's list it supports — `v5.channel.k8s.io`, `v4.channel.k8s.io`,
//! `v3.channel.k8s.io`, `v2.channel.k8s.io`, `channel.k8s.io` (the binary ones; the base64 ones
//! are not served here) — answers `101 Switching Protocols`, then, as the kubelet's streaming
//! server does (`pkg/kubelet/cri/streaming/remotecommand/websocket.go`), sends one empty message on
//! the lowest channel the client reads (stdout 1, else stderr 2, else the error channel 3), the
//! command's output as binary messages `[channel, bytes...]`, and on channel 3 a JSON `Status`:
//! `{"metadata":{},"status":"Success"}`, or for a non-zero exit `NonZeroExitCode` with the exit
//! code as an `ExitCode` cause, or for a program the container lacks an `InternalError` with the
//! runtime's `executable file not found in $PATH` message. Then it closes the websocket.
//!
//! Refused as kube-apiserver and the kubelet refuse: an unknown pod (404), a container not in the
//! pod or a missing one when the pod has several (400, the apiserver's messages), a pod not yet on
//! a node (400), no stream asked for (400 `you must specify at least 1 of stdin, stdout, stderr`),
//! no command (400), a request without the upgrade headers (400 `Upgrade request required`), and
//! subprotocols none of which is served (403 from the websocket handshake).
//!
//! `pods/log`: `container`, `previous`, `sinceSeconds`, `sinceTime`, `limitBytes`, `tailLines`,
//! `timestamps`; lines carry their time (set by the test with [`super::KubeApiServer::set_pod_log`]).
//! Refusals: unknown pod (404), container missing or not valid (400), no previous instance
//! (400 `previous terminated container ... not found`), `sinceSeconds`/`limitBytes`/`tailLines`
//! below their minimum and `sinceSeconds` with `sinceTime` (422 `Invalid`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::{Message, handshake::derive_accept_key};

use super::kube_api::{State, handle, status_error};

/// The binary channel subprotocols served, newest first.
const SUBPROTOCOLS: [&str; 5] = [
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
];

/// What a program in a container prints and how it ends, for `pods/exec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecReply {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
}

impl ExecReply {
    pub fn ok(stdout: impl Into<Vec<u8>>) -> ExecReply {
        ExecReply {
            stdout: stdout.into(),
            stderr: Vec::new(),
            exit_code: 0,
        }
    }

    pub fn failing(stderr: impl Into<Vec<u8>>, exit_code: i32) -> ExecReply {
        ExecReply {
            stdout: Vec::new(),
            stderr: stderr.into(),
            exit_code,
        }
    }
}

/// A pod's container, by namespace, pod and container name.
pub type ContainerKey = (String, String, String);

/// The logs and programs of the pods' containers.
#[derive(Debug, Default)]
pub struct Streams {
    /// Lines with their times, current instance and previous one.
    pub logs: BTreeMap<(ContainerKey, bool), Vec<(SystemTime, String)>>,
    /// argv → reply, per container. A command not listed is not installed in the container.
    pub programs: BTreeMap<(ContainerKey, Vec<String>), ExecReply>,
    /// Every exec: container and argv (for tests that check what was run).
    pub executed: Vec<(ContainerKey, Vec<String>)>,
}

/// Routes a request: the two pod subresources here, everything else to [`handle`].
pub(super) async fn dispatch(state: Arc<Mutex<State>>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if let [
        "api",
        "v1",
        "namespaces",
        namespace,
        "pods",
        pod,
        subresource,
    ] = segments.as_slice()
    {
        let (namespace, pod) = (namespace.to_string(), pod.to_string());
        let query = request.uri().query().unwrap_or_default().to_string();
        record(&state, &request);
        match *subresource {
            "exec" => return exec(state, request, &namespace, &pod, &query).await,
            "log" => return log(&state, &namespace, &pod, &query),
            _ => {}
        }
    }
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, 64 << 20).await {
        Ok(body) => body,
        Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "body too large").into_response(),
    };
    handle(&state, parts.method, parts.uri, parts.headers, body)
}

fn record(state: &Arc<Mutex<State>>, request: &Request) {
    let line = match request.uri().query() {
        Some(query) => format!("{} {}?{query}", request.method(), request.uri().path()),
        None => format!("{} {}", request.method(), request.uri().path()),
    };
    lock(state).requests.push(line);
}

fn lock(state: &Arc<Mutex<State>>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// Every value of each query parameter, in order (`command` repeats).
fn query_values(query: &str) -> BTreeMap<String, Vec<String>> {
    let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        values
            .entry(super::kube_api::percent_decode(key))
            .or_default()
            .push(super::kube_api::percent_decode(value));
    }
    values
}

fn flag(values: &BTreeMap<String, Vec<String>>, name: &str) -> bool {
    values
        .get(name)
        .and_then(|all| all.last())
        .is_some_and(|value| value == "true" || value == "1")
}

fn single<'a>(values: &'a BTreeMap<String, Vec<String>>, name: &str) -> Option<&'a str> {
    values
        .get(name)
        .and_then(|all| all.last())
        .map(String::as_str)
}

fn bad_request(message: String) -> Response {
    status_error(StatusCode::BAD_REQUEST, "BadRequest", message, json!({}))
}

fn invalid(pod: &str, causes: &[(&str, String)]) -> Response {
    let message = causes
        .iter()
        .map(|(field, detail)| format!("{field}: {detail}"))
        .collect::<Vec<_>>()
        .join(", ");
    status_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        format!("PodLogOptions \"{pod}\" is invalid: {message}"),
        json!({"name": pod, "kind": "PodLogOptions",
               "causes": causes.iter().map(|(field, detail)| json!({"reason": "FieldValueInvalid", "message": detail, "field": field})).collect::<Vec<_>>()}),
    )
}

/// The pod, or the response for a missing one.
// A refusal is the response itself, as in `kube_api.rs`.
#[allow(clippy::result_large_err)]
fn pod(state: &State, namespace: &str, name: &str) -> Result<Value, Response> {
    let key = (
        String::new(),
        "pods".to_string(),
        namespace.to_string(),
        name.to_string(),
    );
    state.objects.get(&key).cloned().ok_or_else(|| {
        status_error(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("pods \"{name}\" not found"),
            json!({"name": name, "kind": "pods"}),
        )
    })
}

fn names(pod: &Value, list: &str) -> Vec<String> {
    pod["spec"][list]
        .as_array()
        .map(|containers| {
            containers
                .iter()
                .filter_map(|container| container["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The container a request names, as kube-apiserver picks it (`pkg/registry/core/pod/strategy.go`).
#[allow(clippy::result_large_err)]
fn container(pod: &Value, requested: Option<&str>) -> Result<String, Response> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let containers = names(pod, "containers");
    let init = names(pod, "initContainers");
    let ephemeral = names(pod, "ephemeralContainers");
    match requested.filter(|requested| !requested.is_empty()) {
        None if containers.len() == 1 => Ok(containers[0].clone()),
        None if containers.is_empty() => {
            Err(bad_request(format!("pod {name} does not have a container")))
        }
        None => {
            let mut message = format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            );
            if !init.is_empty() {
                message.push_str(&format!(
                    " or one of the init containers: [{}]",
                    init.join(" ")
                ));
            }
            Err(bad_request(message))
        }
        Some(requested)
            if containers
                .iter()
                .chain(&init)
                .chain(&ephemeral)
                .any(|c| c == requested) =>
        {
            Ok(requested.to_string())
        }
        Some(requested) => Err(bad_request(format!(
            "container {requested} is not valid for pod {name}"
        ))),
    }
}

fn log(state: &Arc<Mutex<State>>, namespace: &str, name: &str, query: &str) -> Response {
    let state = lock(state);
    let pod = match pod(&state, namespace, name) {
        Ok(pod) => pod,
        Err(response) => return response,
    };
    let values = query_values(query);
    let container = match container(&pod, single(&values, "container")) {
        Ok(container) => container,
        Err(response) => return response,
    };
    let number = |field: &str| -> Result<Option<i64>, String> {
        single(&values, field)
            .map(|text| {
                text.parse::<i64>()
                    .map_err(|_| format!("invalid value `{text}` for {field}"))
            })
            .transpose()
    };
    let (since_seconds, limit_bytes, tail_lines) = match (
        number("sinceSeconds"),
        number("limitBytes"),
        number("tailLines"),
    ) {
        (Ok(since), Ok(limit), Ok(tail)) => (since, limit, tail),
        (Err(message), ..) | (_, Err(message), _) | (.., Err(message)) => {
            return bad_request(message);
        }
    };
    let mut causes = Vec::new();
    if let Some(seconds) = since_seconds.filter(|seconds| *seconds < 1) {
        causes.push((
            "sinceSeconds",
            format!("Invalid value: {seconds}: must be greater than 0"),
        ));
    }
    if since_seconds.is_some() && single(&values, "sinceTime").is_some() {
        causes.push((
            "sinceSeconds",
            "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified".to_string(),
        ));
    }
    if let Some(bytes) = limit_bytes.filter(|bytes| *bytes < 1) {
        causes.push((
            "limitBytes",
            format!("Invalid value: {bytes}: must be greater than 0"),
        ));
    }
    if let Some(lines) = tail_lines.filter(|lines| *lines < 0) {
        causes.push((
            "tailLines",
            format!("Invalid value: {lines}: must be greater than or equal to 0"),
        ));
    }
    if !causes.is_empty() {
        return invalid(name, &causes);
    }
    let previous = flag(&values, "previous");
    let key = (
        (namespace.to_string(), name.to_string(), container.clone()),
        previous,
    );
    let Some(lines) = state.streams.logs.get(&key) else {
        if previous {
            return bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{name}\" not found"
            ));
        }
        return text_response(String::new());
    };
    let since =
        since_seconds.map(|seconds| SystemTime::now() - Duration::from_secs(seconds as u64));
    let timestamps = flag(&values, "timestamps");
    let mut selected: Vec<String> = lines
        .iter()
        .filter(|(time, _)| since.is_none_or(|since| *time >= since))
        .map(|(time, line)| match timestamps {
            true => format!("{} {line}\n", humantime::format_rfc3339_nanos(*time)),
            false => format!("{line}\n"),
        })
        .collect();
    if let Some(tail) = tail_lines {
        let keep = selected.len().saturating_sub(tail as usize);
        selected.drain(..keep);
    }
    let mut text = selected.concat();
    if let Some(limit) = limit_bytes {
        text.truncate(limit as usize);
    }
    text_response(text)
}

fn text_response(text: String) -> Response {
    (StatusCode::OK, [("content-type", "text/plain")], text).into_response()
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
}

async fn exec(
    state: Arc<Mutex<State>>,
    mut request: Request,
    namespace: &str,
    name: &str,
    query: &str,
) -> Response {
    let values = query_values(query);
    let (container, command) = {
        let guard = lock(&state);
        let pod = match pod(&guard, namespace, name) {
            Ok(pod) => pod,
            Err(response) => return response,
        };
        let container = match container(&pod, single(&values, "container")) {
            Ok(container) => container,
            Err(response) => return response,
        };
        if pod["spec"]["nodeName"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            return bad_request(format!("pod {name} does not have a host assigned"));
        }
        (
            container,
            values.get("command").cloned().unwrap_or_default(),
        )
    };
    let (stdin, stdout, tty) = (
        flag(&values, "stdin"),
        flag(&values, "stdout"),
        flag(&values, "tty"),
    );
    // With a terminal there is no separate stderr (the kubelet bypasses it).
    let stderr = flag(&values, "stderr") && !tty;
    let headers = request.headers();
    let upgrade = header_text(headers, header::UPGRADE).eq_ignore_ascii_case("websocket")
        && header_text(headers, header::CONNECTION)
            .to_ascii_lowercase()
            .split(',')
            .any(|token| token.trim() == "upgrade");
    if !upgrade {
        return bad_request("Upgrade request required".to_string());
    }
    if !stdin && !stdout && !stderr {
        return bad_request("you must specify at least 1 of stdin, stdout, stderr".to_string());
    }
    if command.is_empty() {
        return bad_request("you must specify at least one command for the container".to_string());
    }
    let requested: Vec<String> = header_text(headers, header::SEC_WEBSOCKET_PROTOCOL)
        .split(',')
        .map(|protocol| protocol.trim().to_string())
        .filter(|protocol| !protocol.is_empty())
        .collect();
    let Some(protocol) = requested
        .iter()
        .find(|protocol| SUBPROTOCOLS.contains(&protocol.as_str()))
        .cloned()
    else {
        return (
            StatusCode::FORBIDDEN,
            format!(
                "requested protocol(s) are not supported: {requested:?}; supports {SUBPROTOCOLS:?}"
            ),
        )
            .into_response();
    };
    let Some(key) = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .map(|key| derive_accept_key(key.as_bytes()))
    else {
        return bad_request("missing Sec-WebSocket-Key".to_string());
    };
    let Some(on_upgrade) = request
        .extensions_mut()
        .remove::<hyper::upgrade::OnUpgrade>()
    else {
        return bad_request("the connection cannot be upgraded".to_string());
    };
    let container_key = (namespace.to_string(), name.to_string(), container);
    let reply = {
        let mut guard = lock(&state);
        guard
            .streams
            .executed
            .push((container_key.clone(), command.clone()));
        guard
            .streams
            .programs
            .get(&(container_key.clone(), command.clone()))
            .cloned()
    };
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let io = hyper_util::rt::TokioIo::new(upgraded);
        let mut socket =
            tokio_tungstenite::WebSocketStream::from_raw_socket(io, Role::Server, None).await;
        let first = if stdout {
            1u8
        } else if stderr {
            2
        } else {
            3
        };
        let _ = socket.send(Message::binary(vec![first])).await;
        let status = match &reply {
            Some(reply) => {
                for (channel, bytes, wanted) in
                    [(1u8, &reply.stdout, stdout), (2u8, &reply.stderr, stderr)]
                {
                    if !wanted {
                        continue;
                    }
                    for chunk in bytes.chunks(8 * 1024) {
                        let mut frame = Vec::with_capacity(chunk.len() + 1);
                        frame.push(channel);
                        frame.extend_from_slice(chunk);
                        let _ = socket.send(Message::binary(frame)).await;
                    }
                }
                exit_status(&command, reply.exit_code)
            }
            None => not_found_status(&command),
        };
        let mut frame = vec![3u8];
        frame.extend_from_slice(status.to_string().as_bytes());
        let _ = socket.send(Message::binary(frame)).await;
        let _ = socket
            .close(Some(CloseFrame {
                code: tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Normal,
                reason: "".into(),
            }))
            .await;
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(
        header::SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&key).expect("an accept key is ASCII"),
    );
    headers.insert(
        header::SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_str(&protocol).expect("a served protocol is ASCII"),
    );
    response
}

/// The kubelet's `Status` for a command that ran.
fn exit_status(command: &[String], code: i32) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
            command.join(" ")
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}
    })
}

/// The `Status` for a program the container does not have (containerd's runc error).
fn not_found_status(command: &[String]) -> Value {
    let program = command.first().map(String::as_str).unwrap_or_default();
    let detail = format!(
        "error executing command in container: failed to exec in container: failed to start exec \"5d3c7f0e9a4b\": OCI runtime exec failed: exec failed: unable to start container process: exec: \"{program}\": executable file not found in $PATH: unknown"
    );
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("Internal error occurred: {detail}"),
        "reason": "InternalError",
        "details": {"causes": [{"message": detail}]},
        "code": 500
    })
}
