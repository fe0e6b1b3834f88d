mod mm1;
mod raid;
mod raid_published;
mod server;
mod shipped;
mod tasks;
mod thermal;
