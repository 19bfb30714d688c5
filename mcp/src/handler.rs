//! The server as rmcp's [`ServerHandler`]: `initialize` answers the pack's instructions,
//! `tools/list` the tool table, and `tools/call` runs the tool on the blocking pool under
//! the server's time limit; `resources/list`, `resources/read`, `prompts/list` and
//! `prompts/get` answer from [`crate::resources`], on the blocking pool too. An unknown tool is a protocol error; everything else a call can
//! get wrong is a tool error the agent reads.

use std::future::Future;

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{MaybeSendFuture, RequestContext, RoleServer};
use strata_eval::Cancel;

use crate::server::{Server, ToolOutput};

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

impl Server {
    /// Runs tool `name` off the async threads, under the server's time limit: past it the
    /// evaluation is cancelled and the call answers a tool error saying the limit. `None`
    /// when no tool has that name.
    pub async fn call_async(
        &self,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
    ) -> Option<ToolOutput> {
        if !self.callable(name) {
            return None;
        }
        let cancel = Cancel::new();
        let timeout = self.call_time_limit(name);
        let server = self.clone();
        let tool = name.to_owned();
        let task_cancel = cancel.clone();
        let task = tokio::task::spawn_blocking(move || server.call(&tool, arguments, &task_cancel));
        // The engine stops itself at the deadline; the margin lets it say so in its words.
        let grace = timeout + std::time::Duration::from_millis(500);
        Some(match tokio::time::timeout(grace, task).await {
            Ok(Ok(out)) => out?,
            Ok(Err(e)) => ToolOutput::error(format!("{name}: the call failed: {e}")),
            Err(_) => {
                cancel.cancel();
                ToolOutput::error(format!(
                    "{name}: the call ran past the server's time limit of {}; ask for less \
                     (bind more arguments, lower limit or max_work)",
                    seconds(timeout)
                ))
            }
        })
    }
}

/// Runs `f` on the blocking pool (it reads the store).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, McpError> + Send + 'static,
) -> Result<T, McpError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| McpError::internal_error(format!("the request failed: {e}"), None))?
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
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .enable_tools()
                .build(),
        )
        .with_server_info(Implementation::new(
            self.pack().server_name(),
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(self.instructions())
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, McpError>> + MaybeSendFuture + '_ {
        std::future::ready(Ok(ListToolsResult::with_all_items(self.tools())))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        match self.call_async(&request.name, request.arguments).await {
            Some(out) => Ok(CallToolResponse::Complete(out.into())),
            None => Err(McpError::invalid_params(
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

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let server = self.clone();
        let resources = blocking(move || server.resources()).await?;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let server = self.clone();
        let contents = blocking(move || server.read_resource(&request.uri)).await?;
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            vec![contents],
        )))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(self.prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let server = self.clone();
        let result =
            blocking(move || server.prompt(&request.name, request.arguments.as_ref())).await?;
        Ok(GetPromptResponse::Complete(result))
    }
}
