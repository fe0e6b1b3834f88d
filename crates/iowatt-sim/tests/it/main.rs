mod mm1;
mod raid;
mod server;
mod shipped;
mod tasks;
mod thermal;
