mod mm1;
mod server;
mod shipped;
mod thermal;
