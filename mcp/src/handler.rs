//! The server as rmcp's [`ServerHandler`]: `initialize` answers the pack's instructions,
//! `tools/list` the tool table, and `tools/call` runs the tool on the blocking pool under
//! the server's time limit; `resources/list`, `resources/read`, `prompts/list` and
//! `prompts/get` answer from [`crate::resources`], on the blocking pool too, and
//! `completion/complete` from [`crate::completion`]. An unknown tool is a protocol error;
//! everything else a call can get wrong is a tool error the agent reads. After each request
//! a session is told which of the lists it was shown changed (`list_changed`); a method the
//! server lacks is -32601 with the method in `data` ([`crate::protocol`]).

use std::borrow::Cow;
use std::future::Future;

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse,
    Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{MaybeSendFuture, Peer, RequestContext, RoleServer};
use strata_eval::{Cancel, Progress};

use crate::protocol::{PROTOCOL_VERSIONS, method_not_found};
use crate::serve::StreamClosed;
use crate::server::{Listing, Server, ToolOutput};

impl From<ToolOutput> for CallToolResult {
    fn from(out: ToolOutput) -> CallToolResult {
        let mut r = if out.is_error {
            CallToolResult::error(vec![ContentBlock::text(out.text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(out.text)])
        };
        r.structured_content = out.structured;
        r
    }
}

/// What a call that its client may cancel came to.
#[derive(Debug)]
pub enum Called {
    /// The tool answered (or failed, or ran past the time limit: a tool error).
    Answered(ToolOutput),
    /// The client cancelled the call: its evaluation has stopped and given back its slot
    /// and memory; nothing is to be answered.
    Cancelled,
    /// No tool has that name.
    Unknown,
}

/// Where a call's progress notifications go: the client and the token it gave.
pub struct ProgressSink {
    /// The client.
    pub peer: Peer<RoleServer>,
    /// The request's `_meta.progressToken`.
    pub token: ProgressToken,
}

/// How often a call with a progress token reports (the first report after as long).
pub const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Cancels the evaluation when dropped: a call whose future is dropped (its session
/// closed) stops its evaluation too.
struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Server {
    /// Runs tool `name` off the async threads, under the server's time limit: past it the
    /// evaluation is cancelled and the call answers a tool error saying the limit. `None`
    /// when no tool has that name.
    pub async fn call_async(
        &self,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
    ) -> Option<ToolOutput> {
        match self
            .call_cancellable(name, arguments, std::future::pending(), None)
            .await
        {
            Called::Answered(out) => Some(out),
            Called::Cancelled | Called::Unknown => None,
        }
    }

    /// [`Server::call_async`], stopped when `cancelled` resolves (the client cancelled the
    /// request or its session closed): the evaluation is cancelled, and this returns
    /// [`Called::Cancelled`] once it has stopped, its heavy slot and memory given back
    /// (to the system too, in a server that trims: [`crate::serve::give_back`]).
    /// With `progress`, a call still running after [`PROGRESS_EVERY`] sends
    /// `notifications/progress` that often (work spent, rounds, facts derived), the last
    /// one before this returns.
    pub async fn call_cancellable(
        &self,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
        cancelled: impl Future<Output = ()>,
        progress: Option<ProgressSink>,
    ) -> Called {
        if !self.callable(name) {
            return Called::Unknown;
        }
        let cancel = Cancel::new();
        let _stop = CancelOnDrop(cancel.clone());
        let counts = Progress::new();
        let timeout = self.call_time_limit(name);
        let server = self.clone();
        let tool = name.to_owned();
        let task_cancel = cancel.clone();
        let task_counts = counts.clone();
        let mut task = tokio::task::spawn_blocking(move || {
            let out = server.call_counted(&tool, arguments, &task_cancel, &task_counts);
            // A cancelled call's memory goes back to the system now, not at the server's
            // next periodic trim (its evaluation has dropped it by here).
            if task_cancel.is_cancelled() {
                crate::serve::give_back();
            }
            out
        });
        // The engine stops itself at the deadline; the margin lets it say so in its words.
        let grace = tokio::time::sleep(timeout + std::time::Duration::from_millis(500));
        tokio::pin!(grace);
        tokio::pin!(cancelled);
        let started = tokio::time::Instant::now();
        let mut ticks = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                joined = &mut task => {
                    return match joined {
                        Ok(Some(out)) => Called::Answered(out),
                        Ok(None) => Called::Unknown,
                        Err(e) => Called::Answered(ToolOutput::error(format!(
                            "{name}: the call failed: {e}"
                        ))),
                    };
                }
                () = &mut cancelled => {
                    cancel.cancel();
                    // The evaluation checks the token every batch of work: wait for it to
                    // stop, so its slot and memory are free when this returns.
                    let _ = task.await;
                    return Called::Cancelled;
                }
                () = &mut grace => {
                    cancel.cancel();
                    return Called::Answered(ToolOutput::error(format!(
                        "{name}: the call ran past the server's time limit of {}; ask for less \
                         (bind more arguments, lower limit or max_work)",
                        seconds(timeout)
                    )));
                }
                _ = ticks.tick(), if progress.is_some() => {
                    if let Some(sink) = &progress {
                        report(sink, &counts, started.elapsed()).await;
                    }
                }
            }
        }
    }
}

/// Sends one progress notification: the work spent so far is the progress (it only grows),
/// the message says the rounds, facts and time. Awaited, so it is written before the
/// answer; a client that is slow to read it does not hold the call past a second.
async fn report(sink: &ProgressSink, counts: &Progress, elapsed: std::time::Duration) {
    let c = counts.read();
    let message = if c.work == 0 {
        format!(
            "preparing (or waiting for a heavy slot), {:.0}s",
            elapsed.as_secs_f64()
        )
    } else {
        format!(
            "evaluating: {} rounds, {} facts derived, {} work units, {:.0}s",
            c.rounds,
            c.facts,
            c.work,
            elapsed.as_secs_f64()
        )
    };
    let mut param = ProgressNotificationParam::new(sink.token.clone(), c.work as f64);
    param.message = Some(message);
    let _ = tokio::time::timeout(PROGRESS_EVERY, sink.peer.notify_progress(param)).await;
}

/// Runs `f` on the blocking pool (it reads the store).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, McpError> + Send + 'static,
) -> Result<T, McpError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| McpError::internal_error(format!("the request failed: {e}"), None))?
}

impl Server {
    /// Sends `notifications/{tools,resources,prompts}/list_changed` for each list this
    /// session was shown that changed since (the pack read again, a module added or
    /// removed).
    async fn say_what_changed(&self, peer: &Peer<RoleServer>) {
        let server = self.clone();
        let Ok(changed) = tokio::task::spawn_blocking(move || server.changed()).await else {
            return;
        };
        for listing in changed {
            let _ = match listing {
                Listing::Tools => {
                    tokio::time::timeout(PROGRESS_EVERY, peer.notify_tool_list_changed()).await
                }
                Listing::Resources => {
                    tokio::time::timeout(PROGRESS_EVERY, peer.notify_resource_list_changed()).await
                }
                Listing::Prompts => {
                    tokio::time::timeout(PROGRESS_EVERY, peer.notify_prompt_list_changed()).await
                }
            };
        }
    }
}

fn seconds(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{s:.3}s")
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let pack = self.pack();
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder().enable_logging();
        ServerConfig::new(
            capabilities
                .enable_completions()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new(pack.server_name(), env!("CARGO_PKG_VERSION"))
                .with_title(format!("Strata: {}", pack.server_name()))
                .with_description(format!(
                    "Datalog and Cypher over {}: stored facts, derived relations, the facts \
                     behind each answer.",
                    pack.about_or_default()
                )),
        )
        .with_instructions(self.instructions())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PROTOCOL_VERSIONS)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(method_not_found(&request.method))
    }

    /// The level is accepted and nothing changes: the server sends no log messages at any
    /// level (what goes wrong in a call is in its answer). Logging is deprecated from
    /// 2026-07-28 on; it is declared so that clients which set a level get an answer.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Ok(())
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Err(method_not_found("resources/subscribe"))
    }

    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Err(method_not_found("resources/unsubscribe"))
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, McpError>> + MaybeSendFuture + '_ {
        let tools = self.tools();
        self.mark_listed(Listing::Tools, Vec::new());
        std::future::ready(Ok(ListToolsResult::with_all_items(tools)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let progress = context.meta.get_progress_token().map(|token| ProgressSink {
            peer: context.peer.clone(),
            token,
        });
        let ct = context.ct.clone();
        // Over HTTP, the call's answer stream closing cancels it too.
        let closed = StreamClosed::of(&context.extensions);
        let cancelled = async move {
            match closed {
                Some(closed) => tokio::select! {
                    () = ct.cancelled_owned() => {}
                    () = closed.closed() => {}
                },
                None => ct.cancelled_owned().await,
            }
        };
        let called = self
            .call_cancellable(&request.name, request.arguments, cancelled, progress)
            .await;
        self.say_what_changed(&context.peer).await;
        match called {
            Called::Answered(out) => Ok(CallToolResponse::Complete(out.into())),
            // rmcp drops the answer to a cancelled request; this one is never sent.
            Called::Cancelled => Err(McpError::internal_error("the call was cancelled", None)),
            Called::Unknown => Err(McpError::invalid_params(
                format!(
                    "unknown tool \"{}\"; the tools are {}",
                    request.name,
                    self.tools()
                        .iter()
                        .map(|t| t.name.as_ref())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            )),
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let server = self.clone();
        let completion = blocking(move || server.complete_argument(&request)).await?;
        self.say_what_changed(&context.peer).await;
        Ok(CompleteResult::new(completion))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let server = self.clone();
        let resources = blocking(move || {
            let resources = server.resources()?;
            server.mark_listed(Listing::Resources, server.module_paths());
            Ok(resources)
        })
        .await?;
        self.say_what_changed(&context.peer).await;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let server = self.clone();
        let contents = blocking(move || server.read_resource(&request.uri)).await?;
        self.say_what_changed(&context.peer).await;
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            vec![contents],
        )))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.mark_listed(Listing::Prompts, Vec::new());
        Ok(ListPromptsResult::with_all_items(self.prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let server = self.clone();
        let result =
            blocking(move || server.prompt(&request.name, request.arguments.as_ref())).await?;
        self.say_what_changed(&context.peer).await;
        Ok(GetPromptResponse::Complete(result))
    }
}
