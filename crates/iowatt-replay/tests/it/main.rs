mod replay;
mod server;
